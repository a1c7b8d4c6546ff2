-- User.email is unique within the User's scope (src/auth/uniqueness.ts), as Medplum scopes users:
-- once among server-wide Users (no `project`) and once among the Users scoped to each project
-- (`project` set). The write check and the sign-in lookup probe this index by email and scope;
-- the email-only index of 0007 is replaced by it (its first column serves lookups by email alone).
-- Not UNIQUE, as 0007's was not: a database written before a rule may hold duplicates.

-- CreateIndex
CREATE INDEX IF NOT EXISTS "resource_user_email_scope_idx" ON "resource" (lower(content->>'email'), (coalesce(content->'project'->>'reference', '')))
    WHERE "resourceType" = 'User' AND NOT deleted;

-- DropIndex
DROP INDEX IF EXISTS "resource_user_email_idx";
