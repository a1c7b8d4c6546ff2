# Flint's container image: `docker build -t flint .` (docs/deployment.md#container).
# Two stages: the first installs the production dependencies and generates the Prisma client, the
# second holds only what the server runs and runs it as the unprivileged `node` user.

FROM node:20-bookworm-slim AS build
WORKDIR /app
ENV NODE_ENV=production
# The install's postinstall generates the Prisma client from the schema (prisma.config.ts).
COPY package.json package-lock.json prisma.config.ts ./
COPY prisma ./prisma
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY schema ./schema
COPY src ./src
COPY scripts/build-dist.mjs ./scripts/
# The server runs as JavaScript compiled here (dist/), not through tsx (README "Start the server").
RUN node scripts/build-dist.mjs

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/data
COPY --from=build --chown=root:root /app /app
# The embedded database's folder, when DATABASE_URL is unset; besides it the server writes only to /tmp.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthcheck').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# `npm start`'s command without npm, so that SIGTERM reaches the server (it drains, then exits).
CMD ["node", "--max-semi-space-size=64", "--min-semi-space-size=64", "dist/main.js"]
