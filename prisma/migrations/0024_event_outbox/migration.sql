-- CreateTable
CREATE TABLE "event_outbox" (
    "id" UUID NOT NULL,
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "versionId" TEXT NOT NULL,
    "interaction" TEXT NOT NULL,
    "subscriptionId" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "dueAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "event_outbox_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "event_outbox_dueAt_idx" ON "event_outbox"("dueAt");

