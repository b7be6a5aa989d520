/** Feedback a person sent from an app's page (DECISIONS §6). */
export interface FeedbackTable {
  id: string;
  app_id: string;
  text: string;
  /** JSON text of the sender's `structuredData`, or null. */
  structured_data: string | null;
  /** Where a reply may go, when the sender gave one. */
  email: string | null;
  /** The signed-in sender, when known. */
  user_id: string | null;
  /** The app's revision when it was sent. */
  revision: number;
  created_at: number;
}
