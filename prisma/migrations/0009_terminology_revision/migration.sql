-- Terminology revision (issue 5): one counter, raised in the transaction of every change to the
-- concept tables or to a CodeSystem/ValueSet resource. Servers keep code systems and value sets
-- in memory (src/terminology/cache.ts) and, on PostgreSQL, read this row once per request to
-- know whether what they hold is still current (another server may have written).

-- CreateTable
CREATE TABLE "terminology_revision" (
    "id" INTEGER NOT NULL,
    "revision" BIGINT NOT NULL,

    CONSTRAINT "terminology_revision_pkey" PRIMARY KEY ("id")
);

INSERT INTO "terminology_revision" ("id", "revision") VALUES (1, 0);
