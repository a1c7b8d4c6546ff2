-- CreateTable
CREATE TABLE "auth_used_value" (
    "key" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "auth_used_value_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "auth_used_value_expiresAt_idx" ON "auth_used_value"("expiresAt");

