-- Account values unique across all projects (src/auth/uniqueness.ts): ProjectMembership.externalId
-- (SPEC 2.5, 5 rule 7) and User.email (case-insensitive). Writes check them under an advisory lock
-- inside their transaction; these indexes make that check, the external sign-in lookup by `sub` and
-- the sign-in lookup by email one index probe each. They are not UNIQUE on purpose: a database
-- written before the rule may hold duplicates, which must not stop the migration (external
-- sign-in still refuses an ambiguous externalId with 401).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "resource_membership_externalId_idx" ON "resource" ((content->>'externalId'))
    WHERE "resourceType" = 'ProjectMembership' AND NOT deleted;

-- CreateIndex
CREATE INDEX IF NOT EXISTS "resource_user_email_idx" ON "resource" (lower(content->>'email'))
    WHERE "resourceType" = 'User' AND NOT deleted;
