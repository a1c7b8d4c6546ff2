-- Resources of a project read by id. Generated from prisma/schema.prisma (npm run migration:new).
--
-- Searches join resources by id from index rows (chains, _include, pages driven by index rows),
-- with the resource's project and type known: `r.id = <index row's id> AND r."projectId" = ..
-- AND r."resourceType" = ..`. With planner statistics older than the data (a table written since
-- its last ANALYZE, as on a fresh database), PostgreSQL's default selectivities made it prefer
-- ("projectId", "resourceType", "lastUpdated", id), where id comes after "lastUpdated" and the
-- probe reads every resource of the type in the project, to the primary key ("resourceType", id),
-- whose two columns it took to match many rows. An index whose every column the join binds is
-- the cheapest path under any statistics; id leads so that no scan of a whole type is tempted by it.

-- CreateIndex
CREATE INDEX "resource_id_projectId_resourceType_idx" ON "resource"("id", "projectId", "resourceType");

