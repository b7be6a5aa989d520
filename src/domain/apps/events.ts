import type { StagedBuild } from "./staging-seam.ts";

/**
 * What happened to an app, for the parts that react to it without the lifecycle knowing them:
 * `published` after every successful source write (create, upsert, PUT, PATCH) — the live
 * `revision` event, the `contract_validation` activity event for `warnings`, and the isolate
 * staged for this very write when there is one (StagingSeam); `deleted` after an
 * app and its rows are gone (DELETE or the reaper) — blobs and caches to drop.
 */
export type AppEvent =
  | { type: "published"; appId: string; revision: number; warnings: string[]; staged?: StagedBuild }
  | { type: "deleted"; appId: string };

export type AppListener = (event: AppEvent) => Promise<void> | void;

/**
 * Listeners run after the write has committed, in registration order, and are awaited. A failing
 * listener is reported to `onError` and does not fail the write that already happened.
 */
export class AppEvents {
  private readonly listeners: AppListener[] = [];

  constructor(private readonly onError: (error: unknown, event: AppEvent) => void) {}

  on(listener: AppListener): void {
    this.listeners.push(listener);
  }

  async emit(event: AppEvent): Promise<void> {
    for (const listener of this.listeners) {
      try {
        await listener(event);
      } catch (error) {
        this.onError(error, event);
      }
    }
  }
}
