import { describe, expect, it } from "vitest";
import { IsolateTable, type BuildOf } from "../src/runtime/executor/isolates.ts";

const revision = (appId: string, rev: number, secrets = 0): [string, BuildOf] => [`${appId}:${rev}:${secrets}`, { appId, kind: "revision", order: rev }];
const staged = (appId: string, seq: number): [string, BuildOf] => [`${appId}:staged-${seq}:0`, { appId, kind: "staged", order: seq }];

/** Runs one call of `key` to its end. */
function ran(table: IsolateTable, [key, of]: [string, BuildOf]): string {
  table.begin(key, 1, of);
  table.end(key);
  return key;
}

// Room for everything and nothing idle: any victim here is there only because it was superseded.
const victims = (table: IsolateTable) => table.victims(1000, 0);

describe("IsolateTable: a newer build of an app supersedes the older", () => {
  it("evicts an app's older revisions (and older secrets versions) at once, and nobody else's", () => {
    const table = new IsolateTable();
    const r1 = ran(table, revision("a", 1));
    const other = ran(table, revision("b", 1));
    expect(victims(table)).toEqual([]);
    const r2 = ran(table, revision("a", 2));
    const r2secrets = ran(table, revision("a", 2, 1));
    expect(victims(table).sort()).toEqual([r1, r2].sort());
    expect(victims(table)).not.toContain(r2secrets);
    expect(victims(table)).not.toContain(other);
  });

  it("within one revision, the secrets version built here last is the current one, lower or higher", () => {
    const table = new IsolateTable();
    const before = ran(table, revision("a", 5, 9));
    // Moved to an owner whose secrets scope is at version 2: the new isolate stays, the old goes.
    const after = ran(table, revision("a", 5, 2));
    expect(victims(table)).toEqual([before]);
    expect(victims(table)).not.toContain(after);
  });

  it("waits for a superseded isolate's calls in flight", () => {
    const table = new IsolateTable();
    const [k1, of1] = revision("a", 1);
    table.begin(k1, 1, of1);
    ran(table, revision("a", 2));
    expect(victims(table)).toEqual([]);
    table.end(k1);
    expect(victims(table)).toEqual([k1]);
  });

  it("a late call of an old revision does not supersede the newer one: the old one goes after it", () => {
    const table = new IsolateTable();
    const r2 = ran(table, revision("a", 2));
    const r1 = ran(table, revision("a", 1));
    expect(victims(table)).toEqual([r1]);
    expect(victims(table)).not.toContain(r2);
  });

  it("keeps the newest staged build beside the current revision; a newer staged build supersedes it", () => {
    const table = new IsolateTable();
    const current = ran(table, revision("a", 3));
    const s1 = ran(table, staged("a", 7));
    expect(victims(table)).toEqual([]);
    const s2 = ran(table, staged("a", 9));
    expect(victims(table)).toEqual([s1]);
    // Taken over by its revision (the supervisor renames it): forgotten here, then run as the revision.
    table.forget(s2);
    ran(table, revision("a", 4));
    expect(victims(table).sort()).toEqual([current, s1].sort());
  });

  it("still evicts the idle and the least recently used past capacity, superseded ones counted first", () => {
    const table = new IsolateTable();
    const b = ran(table, revision("b", 1));
    const old = ran(table, revision("a", 1));
    ran(table, revision("a", 2));
    ran(table, revision("c", 1));
    // Four keys, room for three: the superseded one makes the room, b (least recently used) stays.
    expect(table.victims(3, 0)).toEqual([old]);
    expect(table.victims(2, 0)).toEqual([old, b]);
    // Idle since before 2 (every call here ran at 1): all of them, the superseded one first.
    expect(table.victims(1000, 2)[0]).toBe(old);
    expect(table.victims(1000, 2)).toHaveLength(4);
  });

  it("counts isolates already being evicted as gone, so a call past capacity evicts no one more", () => {
    const table = new IsolateTable();
    const a = ran(table, revision("a", 1));
    ran(table, revision("b", 1));
    ran(table, revision("c", 1));
    expect(table.victims(2, 0)).toEqual([a]);
    table.evicting.set(a, new Promise(() => undefined));
    // a still holds its place until its eviction ends, but the table is back within capacity.
    expect(table.victims(2, 0)).toEqual([]);
  });

  it("evicts at most atMost while there is room, and all it takes past capacity", () => {
    const table = new IsolateTable();
    const stale = [1, 2, 3].map((rev) => ran(table, revision("a", rev)));
    const b = ran(table, revision("b", 1));
    ran(table, revision("a", 4));
    // Two of a's three old revisions now, the third at a later tick; b, idle too, after them.
    expect(table.victims(1000, 2, 2)).toEqual(stale.slice(0, 2));
    expect(table.victims(1000, 2, 4)).toEqual([...stale, b]);
    // Five keys, room for one: four must go, whatever atMost says.
    expect(table.victims(1, 0, 0)).toEqual([...stale, b]);
  });
});
