-- String matches in index order (issue 4). Hand-written, as 0002_search: Prisma's schema cannot
-- declare operator classes.
--
-- A search without _sort whose first filter is a string prefix (`Patient?name=smi`) reads its
-- page from the string index in index order, (value, resourceId), and stops after a window of
-- rows (src/search/service.ts, prefixOrderedPage) instead of de-duplicating every matching row
-- (1,666 for "smi" among 100,000 Patients). That order needs "resourceId" as the last key column:
-- as an INCLUDE column (0002) rows with one value come in heap order, so PostgreSQL had to sort
-- each value's rows. An `:exact` match (one value) now also comes out ordered by resource, as
-- token and reference matches do. Same columns as before: writes maintain no additional index.

DROP INDEX "string_index_projectId_resourceType_code_value_idx";

CREATE INDEX "string_index_projectId_resourceType_code_value_idx" ON "string_index"("projectId", "resourceType", "code", "value" text_pattern_ops, "resourceId");
