-- Search (issue 4). Hand-written: Prisma's schema can declare neither operator classes on B-tree
-- indexes nor INCLUDE columns. Each index below replaces the index of the same name and key
-- columns from 0001_init, so writes maintain no additional index.
--
-- 1. The default string match is a prefix match (`value LIKE 'abc%'`), and so is uri `:below`. A
--    B-tree index serves LIKE prefixes only under the "C" collation or with the *_pattern_ops
--    operator class; databases are commonly created with another collation (C.UTF-8,
--    en_US.UTF-8). text_pattern_ops serves equality as well.
-- 2. Search conditions are EXISTS subqueries that need the matching rows' "resourceId" (and,
--    for references and dates, one more column): having them in the index makes the match an
--    index-only scan instead of one heap visit per matching row. For tokens and references
--    "resourceId" is the last key column, so an equality match comes out ordered by resource and
--    PostgreSQL can de-duplicate it as a stream (a LIMIT stops early) instead of hashing every match.

DROP INDEX "string_index_projectId_resourceType_code_value_idx";

CREATE INDEX "string_index_projectId_resourceType_code_value_idx" ON "string_index"("projectId", "resourceType", "code", "value" text_pattern_ops) INCLUDE ("resourceId");

DROP INDEX "uri_index_projectId_resourceType_code_value_idx";

CREATE INDEX "uri_index_projectId_resourceType_code_value_idx" ON "uri_index"("projectId", "resourceType", "code", "value" text_pattern_ops) INCLUDE ("resourceId");

DROP INDEX "token_index_projectId_resourceType_code_value_system_idx";

CREATE INDEX "token_index_projectId_resourceType_code_value_system_idx" ON "token_index"("projectId", "resourceType", "code", "value", "system", "resourceId");

DROP INDEX "reference_index_projectId_resourceType_code_targetId_idx";

CREATE INDEX "reference_index_projectId_resourceType_code_targetId_idx" ON "reference_index"("projectId", "resourceType", "code", "targetId", "targetType", "resourceId");

DROP INDEX "date_index_projectId_resourceType_code_start_idx";

CREATE INDEX "date_index_projectId_resourceType_code_start_idx" ON "date_index"("projectId", "resourceType", "code", "start") INCLUDE ("end", "resourceId");

DROP INDEX "date_index_projectId_resourceType_code_end_idx";

CREATE INDEX "date_index_projectId_resourceType_code_end_idx" ON "date_index"("projectId", "resourceType", "code", "end") INCLUDE ("start", "resourceId");
