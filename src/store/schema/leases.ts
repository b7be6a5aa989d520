/** One row per periodic job: who claimed its current period, and when the next one opens. */
export interface LeasesTable {
  name: string;
  holder: string;
  /** The job may be claimed again once the clock reaches this (epoch ms). */
  next_at: number;
  claimed_at: number;
}
