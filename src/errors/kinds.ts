// Every error kind the spec lists, with its HTTP status: the spec's status table first, then
// DECISIONS §0b for the kinds the spec does not place. A kind has one status everywhere, with
// one exception the decisions name: `operation_failed` is 422 when the app answered `ok: false`
// and 500 when it threw or answered garbage (see `ApiError`'s status override).
export const ERROR_STATUS = {
  // 400
  invalid_request: 400,
  invalid_id: 400,
  invalid_module: 400,
  invalid_ui: 400,
  invalid_manifest_schema: 400,
  invalid_manifest_exports: 400,
  invalid_route_schema: 400,
  invalid_routes_shape: 400,
  unpinned_cdn_script: 400,
  invalid_icon: 400,
  invalid_handle: 400,
  invalid_secret_name: 400,
  invalid_domain: 400,
  invalid_description: 400,
  missing_description: 400,
  description_too_long: 400,
  invalid_call_shape: 400,
  invalid_revision: 400,
  expected_revision_required: 400,
  idempotency_key_required: 400,
  grantee_is_owner: 400,
  grantee_is_self: 400,
  op_requires_input: 400,
  template_media_invalid: 400,
  image_origin_denied: 400,
  app_build_unsupported: 400,
  unexpected_keys: 400,
  invalid_input: 400,
  secret_too_large: 400,
  invalid_interval: 400,
  asset_invalid_key: 400,
  asset_invalid_content_type: 400,
  // 401
  unauthorized: 401,
  sign_in_required: 401,
  token_expired: 401,
  sse_cookie_expired: 401,
  // 403
  forbidden: 403,
  forbidden_write: 403,
  capability_denied: 403,
  anon_not_remixable: 403,
  copy_data_forbidden: 403,
  forbidden_template_edit: 403,
  plan_required: 403,
  read_only: 403,
  invite_sender_blocked: 403,
  app_unclaimed: 403,
  version_history_unavailable: 403,
  webhook_disabled: 403,
  // 404
  not_found: 404,
  app_not_found: 404,
  manifest_not_found: 404,
  feedback_not_found: 404,
  secret_not_found: 404,
  unknown_operation: 404,
  operation_not_found: 404,
  grantee_not_found: 404,
  // 405
  method_not_allowed: 405,
  // 409
  already_claimed: 409,
  already_approved: 409,
  already_member: 409,
  already_invited: 409,
  grantee_already_has_access: 409,
  team_slug_taken: 409,
  handle_taken: 409,
  name_taken: 409,
  domain_taken: 409,
  domain_exists: 409,
  duplicate_routine: 409,
  duplicate_webhook: 409,
  duplicate_remix: 409,
  feedback_has_no_reply_recipient: 409,
  secret_already_exists: 409,
  idempotency_conflict: 409,
  manifest_id_conflict: 409,
  manifest_id_immutable: 409,
  app_build_authority_lost: 409,
  // 410
  expired: 410,
  app_build_expired: 410,
  // 412
  revision_mismatch: 412,
  invalid_if_match: 412,
  // 413
  module_too_large: 413,
  ui_too_large: 413,
  text_too_large: 413,
  structured_data_too_large: 413,
  payload_too_large: 413,
  edits_too_large: 413,
  asset_too_large: 413,
  asset_count_exceeded: 413,
  asset_quota_exceeded: 413,
  stored_value_too_large: 413,
  storage_full: 413,
  // Not placed by the spec or DECISIONS: a too-large carry is a size refusal like its siblings.
  copy_data_too_large: 413,
  // 422
  old_string_not_found: 422,
  old_string_not_unique: 422,
  operation_failed: 422,
  template_listing_incomplete: 422,
  contract_migration_required: 422,
  contract_not_enabled: 422,
  version_not_restorable: 422,
  candidate_effects_unsupported: 422,
  app_build_failed: 422,
  // 428
  precondition_required: 428,
  // 429
  rate_limited: 429,
  too_many_requests: 429,
  app_busy: 429,
  routine_limit_exceeded: 429,
  webhook_limit_exceeded: 429,
  visitor_rate_limited: 429,
  link_cap_reached: 429,
  invite_cap_reached: 429,
  version_limit_exceeded: 429,
  storage_limit_exceeded: 429,
  // 500. `asset_error` is not placed by the spec or DECISIONS: it is the blob store failing
  // underneath us. `internal_error` is Brickyard's one addition to the spec's list: the kind of
  // an unexpected exception, which must not borrow a kind that means something else.
  asset_error: 500,
  internal_error: 500,
  // 502
  invalid_output: 502,
  capability_error: 502,
  // 503
  executor_error: 503,
  service_busy: 503,
  app_build_capacity: 503,
  app_build_unavailable: 503,
  domain_provider_unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorKind = keyof typeof ERROR_STATUS;

export function isErrorKind(value: string): value is ErrorKind {
  return Object.hasOwn(ERROR_STATUS, value);
}
