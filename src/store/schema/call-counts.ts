/** Op calls and failures per app per UTC hour, added to by every instance (migration 018). */
export interface OpCallCountsTable {
  app_id: string;
  /** The hour's start, epoch ms. */
  hour: number;
  calls: number;
  failures: number;
}
