-- Search speed at a million resources (issue 4) and exact counts for Measure/$evaluate-measure
-- (issue 5). Hand-written: Prisma's schema declares neither GiST indexes on expressions nor
-- partial indexes.
--
-- 1. Date ranges (`date=ge2023-03-01&date=le2023-03-01`): neither bound alone is selective, and a
--    B-tree on start or end cannot find the rows overlapping a range. A GiST index on each row's
--    range (null bounds open) can. The expression must stay exactly as
--    src/search/query/conditions.ts spells it (dateRowRange) for the planner to use the index.
--    A reversed row (end before start) is turned round so that writing it never fails.
-- 2. Rows that are not the first of their resource in date_index (seq > 1): the search treats a
--    resource with one row of a date parameter in one probe and looks at the others apart
--    (conditions.ts, dateRangeCondition). When parameters have one value per resource, the usual
--    case, this index is nearly empty and costs writes nothing.
-- 3. Deleted resources (tombstones) by type: an exact count of a type is the rows of the type
--    (index-only on the lastUpdated index) minus these. Holds only deleted rows.

CREATE INDEX "date_index_range_idx" ON "date_index" USING gist ((CASE WHEN start > "end" THEN tstzrange("end", start, '[]') ELSE tstzrange(start, "end", '[]') END));

CREATE INDEX "date_index_later_rows_idx" ON "date_index"("projectId", "resourceType", "code", "resourceId") WHERE seq > 1;

CREATE INDEX "resource_deleted_idx" ON "resource"("projectId", "resourceType") WHERE deleted;

-- 4. Planner statistics on the combination of a token row's type, code, value and system: the
--    planner otherwise multiplies their frequencies as if independent and underestimates a
--    common code fivefold (50,000 Observations of one LOINC code estimated as 9,763), which both
--    `_total=estimate` reports and the choice of plan rests on. Costs ANALYZE a little, writes nothing.

CREATE STATISTICS "token_index_type_code_value_system_stats" (mcv) ON "resourceType", "code", "value", "system" FROM "token_index";

-- Gather those statistics and the new expression index's now rather than at the next autovacuum.

ANALYZE "token_index";

ANALYZE "date_index";
