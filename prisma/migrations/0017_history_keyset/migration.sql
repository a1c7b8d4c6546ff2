-- History pages in keyset order. Generated from prisma/schema.prisma (npm run migration:new).
--
-- Every history page (src/storage/history.ts) is read newest first by ("lastUpdated",
-- "versionId"), from the top or from a cursor (the previous page's last version), so that a client
-- can walk a whole project without an OFFSET cap. Each kind of page gets an index in exactly that
-- order, read in order and stopped after count + 1 rows:
-- - a type's history: (projectId, resourceType, ...), replacing the index without versionId, which
--   cannot give that order: PostgreSQL 15 without statistics read and sorted every version of the
--   type in the project for each page (30,000 versions for a page of 21, ~30 ms);
-- - a project's system history: (projectId, ...);
-- - a super admin's system history over every project: (lastUpdated, versionId).
-- A resource's own history keeps ("resourceType", "id", "lastUpdated") of 0001_init.

-- DropIndex
DROP INDEX "resource_history_projectId_resourceType_lastUpdated_idx";

-- CreateIndex
CREATE INDEX "resource_history_projectId_resourceType_lastUpdated_version_idx" ON "resource_history"("projectId", "resourceType", "lastUpdated" DESC, "versionId" DESC);

-- CreateIndex
CREATE INDEX "resource_history_projectId_lastUpdated_versionId_idx" ON "resource_history"("projectId", "lastUpdated" DESC, "versionId" DESC);

-- CreateIndex
CREATE INDEX "resource_history_lastUpdated_versionId_idx" ON "resource_history"("lastUpdated" DESC, "versionId" DESC);

