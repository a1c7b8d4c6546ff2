-- Binary bytes in chunks (src/storage/binary-storage.ts): binary_content keeps what an object is
-- and how large, binary_chunk its bytes in order, so an object is written and read a chunk at a
-- time instead of whole.

CREATE TABLE "binary_chunk" (
    "key" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "binary_chunk_pkey" PRIMARY KEY ("key","seq")
);

-- The bytes already stored, cut at the store's chunk size (512 KiB); an empty object has no chunk.
INSERT INTO "binary_chunk" ("key", "seq", "data")
SELECT c."key", s.seq, substring(c."data" FROM s.seq * 524288 + 1 FOR 524288)
FROM "binary_content" c, generate_series(0, (length(c."data") - 1) / 524288) AS s(seq)
WHERE length(c."data") > 0;

ALTER TABLE "binary_content" DROP COLUMN "data";

-- A project's objects, for Project/$expunge.
CREATE INDEX "binary_content_projectId_idx" ON "binary_content"("projectId");
