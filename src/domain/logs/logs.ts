import type { LogLine, LogLineSink } from "../../runtime/index.ts";
import { KeyedListeners } from "../events/keyed-listeners.ts";
import { LogRings, type LogFilter } from "./ring.ts";

export type LogListener = (lines: readonly LogLine[]) => void;

/**
 * Carries lines to followers on other instances (PostgreSQL NOTIFY; pg-transport.ts). Lines are
 * sent only for apps someone follows somewhere: `follow` says so to every instance while it lasts.
 */
export interface LogTransport {
  publish(appId: string, lines: readonly LogLine[]): void;
  /** Someone here follows the app's lines; call the returned function when they stop. */
  follow(appId: string): () => void;
  close(): Promise<void>;
}

/**
 * The log lines of every app (DECISIONS §18): the runtime writes each op call's lines here, the
 * logs route, the MCP tool and the console read them, and followers get new ones as they come.
 * Each instance keeps its own lines; with a transport, followers see every instance's.
 */
export class AppLogs implements LogLineSink {
  private readonly rings = new LogRings();
  private readonly listeners = new KeyedListeners<readonly LogLine[]>();
  private transport: LogTransport | null = null;

  useTransport(transport: LogTransport): void {
    this.transport = transport;
  }

  write(appId: string, lines: readonly LogLine[]): void {
    this.rings.add(appId, lines);
    this.listeners.emit(appId, lines);
    this.transport?.publish(appId, lines);
  }

  /** Lines another instance wrote, for this instance's followers (not its ring). */
  deliver(appId: string, lines: readonly LogLine[]): void {
    this.listeners.emit(appId, lines);
  }

  /** Newest first. */
  read(appId: string, filter: LogFilter): LogLine[] {
    return this.rings.read(appId, filter);
  }

  /** Calls `listener` with each batch of new lines of the app; call the returned function to stop. */
  follow(appId: string, listener: LogListener): () => void {
    const stopListening = this.listeners.add(appId, listener);
    const stopWanting = this.transport?.follow(appId);
    return () => {
      stopListening();
      stopWanting?.();
    };
  }

  drop(appId: string): void {
    this.rings.drop(appId);
  }

  get bytes(): number {
    return this.rings.bytes;
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await this.transport?.close();
  }
}
