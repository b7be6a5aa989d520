/** The form of every id the service mints (randomUUID). A string of another form names nothing, and reaches no query. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
