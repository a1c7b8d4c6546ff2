-- Range values in quantity components of composite parameters (issue 4: `context-type-quantity`
-- of the conformance and knowledge resources, whose useContext.value may be a Range). Such a
-- component keeps the Range's low in "numberN" and its high in "highN" ('-Infinity' / 'Infinity'
-- for an open end); a Quantity leaves "highN" null (the search reads COALESCE("highN", "numberN")),
-- so existing rows need no rewrite. Resources holding a Range get rows once written or reindexed.

-- AlterTable
ALTER TABLE "composite_index" ADD COLUMN     "high1" DOUBLE PRECISION,
ADD COLUMN     "high2" DOUBLE PRECISION,
ADD COLUMN     "high3" DOUBLE PRECISION;
