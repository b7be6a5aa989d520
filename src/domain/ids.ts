import { timeOrderedUuid } from "../store/time-ordered-id.ts";

/** The form of every id the service mints (UUIDs). A string of another form names nothing, and reaches no query. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A new app's id: a UUID version 7. An app's id keys its row and the rows of its versions and
 * tokens; random ids made each create dirty a random page of each of those indexes (and read it
 * back once the database outgrew SQLite's page cache), ids in time order append to them. Its 74
 * random bits keep it unguessable; the millisecond it leaks is the app's `createdAt`.
 */
export function newAppId(): string {
  return timeOrderedUuid();
}
