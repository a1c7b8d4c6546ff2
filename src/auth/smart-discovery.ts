/**
 * What `/.well-known/smart-configuration` promises: only what works (SMART App Launch 2.0,
 * Conformance). No `sso-openid-connect`: the token response has no `id_token`; no
 * `permission-online`: `online_access` is granted but its refresh tokens are not tied to a session.
 */
export const SMART_CAPABILITIES: readonly string[] = [
  // The authorization code flow at /oauth2/authorize, with PKCE S256; public clients need no secret.
  'launch-standalone',
  'client-public',
  'client-confidential-symmetric',
  // A user whose profile is a Patient gets that patient as launch context (no picker needed).
  'context-standalone-patient',
  'permission-offline',
  'permission-patient',
  'permission-user',
  'permission-v1',
  'permission-v2',
  // Backend Services (client assertions) and EHR launch ($smart-launch, then authorize with `launch`).
  'client-confidential-asymmetric',
  'launch-ehr',
  'context-ehr-patient',
  'context-ehr-encounter',
];

/** Scopes granted as asked; resource scopes are patterns (any type, granular ones too: docs/smart.md). */
export const SMART_SCOPES_SUPPORTED: readonly string[] = [
  'openid',
  'profile',
  'email',
  'launch',
  'launch/patient',
  'launch/encounter',
  'offline_access',
  'online_access',
  'patient/*.cruds',
  'patient/*.rs',
  'user/*.cruds',
  'user/*.rs',
  'system/*.cruds',
  'system/*.rs',
  'patient/*.read',
  'patient/*.write',
  'user/*.read',
  'user/*.write',
  'system/*.read',
  'system/*.write',
  'patient/*.*',
  'user/*.*',
  'system/*.*',
];
