import type { Permission, ResourceScopes } from './scopes.js';

/** Who is calling, as decided by authentication. */
export interface Identity {
  /** The project the caller acts in; every read and write is scoped to it. */
  readonly projectId: string;
  /** A super admin sees every project (DESIGN 5); `_project=<id>` narrows a search to one. */
  readonly superAdmin: boolean;
  /** Admin of `projectId`: manages its memberships, client applications and access policies. */
  readonly projectAdmin?: boolean;
  /** The ProjectMembership the token acts through. */
  readonly membershipId?: string;
  /** `User/<id>` or `ClientApplication/<id>`: who logged in. */
  readonly subject?: string;
  /** The membership's profile, e.g. `Practitioner/<id>` (or the ClientApplication itself). */
  readonly profile?: string;
  /** The ClientApplication the token was issued to, if any. */
  readonly clientId?: string;
  /** The Login behind the token (revoked by /oauth2/logout). */
  readonly loginId?: string;
  /** The scopes granted to the token (space-separated, as in its `scope` claim). */
  readonly scope?: string;
  /**
   * The token's SMART resource scopes, parsed once (the identity cache keeps them). Absent when
   * they cannot narrow anything (no resource scope, or `system/*.*`): the membership's access applies.
   */
  readonly scopes?: ResourceScopes;
  /**
   * Which permission's scopes narrow the searches run as this identity: `s` (absent) for searches,
   * `r` for the searches that check reads by id, `c`/`u` for those that check a write.
   */
  readonly scopeUse?: Permission;
  /** SMART launch context of the token (bare ids): the patient and encounter it was launched for. */
  readonly launch?: LaunchContext;
  /** Rules of the membership's AccessPolicy; absent means every type, read and write. */
  readonly accessPolicy?: AccessRules;
}

/** An AccessPolicy reduced to what enforcement needs (resource types are case-sensitive). */
export interface AccessRules {
  readonly policyId: string;
  /**
   * Allowed types; `*` allows every type. `compartment` (Medplum's deprecated
   * `AccessPolicy.resource.compartment`, a reference) narrows the type like criteria
   * `_compartment=<it>`, on a `*` rule too.
   */
  readonly resources: readonly AccessRule[];
  /** `AccessPolicy.compartment` (Medplum's, deprecated): the account a member's new resources are assigned to. */
  readonly compartment?: string;
}

/** An interaction an AccessPolicy rule may list (Medplum's `AccessPolicy.resource.interaction`). */
export type PolicyInteraction = 'read' | 'vread' | 'history' | 'search' | 'create' | 'update' | 'delete';

/** One `AccessPolicy.resource` rule. */
export interface AccessRule {
  readonly resourceType: string;
  readonly readonly: boolean;
  /** The interactions the rule grants, when it lists them (Medplum's successor of `readonly`); absent: all, or the reads when `readonly`. */
  readonly interactions?: readonly PolicyInteraction[];
  readonly criteria?: string;
  readonly compartment?: string;
}

/** SMART App Launch context: what the app was launched for (ids without the type). */
export interface LaunchContext {
  readonly patient?: string;
  readonly encounter?: string;
}
