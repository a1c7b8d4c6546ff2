/**
 * The layer order of docs/architecture.md: a folder of src/ may import only folders of its own
 * layer or of layers listed before it; type-only imports count too. `npm run check:layers` runs
 * it, and CI runs that.
 */
const LAYERS = [
  ['generated'],
  ['config', 'identity', 'net'],
  ['fhir'],
  ['db', 'cache'],
  ['validation'],
  ['indexing'],
  ['storage'],
  ['auth'],
  ['operations'],
  ['terminology'],
  ['search'],
  ['measure', 'admin', 'clinical', 'ips', 'sdc', 'validate', 'profiles', 'csv', 'bots', 'events', 'bulk'],
  ['access'],
  ['router'],
  ['graphql'],
  ['http'],
  // The composition root: starts the server and registers what the capabilities plug in.
  ['main', 'server', 'workers', 'builtins', 'telemetry'],
];

const pathOf = (names) => `^src/(${names.join('|')})(/|\\.ts$)`;

const upward = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${layer.join('-')}`,
  comment: `${layer.join(', ')} may import only: ${LAYERS.slice(0, index + 1).flat().join(', ')}`,
  severity: 'error',
  from: { path: pathOf(layer) },
  to: { path: pathOf(LAYERS.slice(index + 1).flat()) },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'unknown-folder',
      comment: 'Every file of src/ belongs to a layer: add a new folder to LAYERS in .dependency-cruiser.cjs',
      severity: 'error',
      from: { path: '^src/', pathNot: pathOf(LAYERS.flat()) },
      to: {},
    },
    {
      name: 'one-config-module',
      comment: 'src/config.ts is the one configuration module: the files of src/config/ are its parts, read through it',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/config(\\.ts$|/)' },
      to: { path: '^src/config/' },
    },
    {
      name: 'no-circular',
      comment: 'Modules that import each other cannot be read or replaced one at a time',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/generated/' },
      to: { circular: true },
    },
    {
      name: 'no-test-code-in-src',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/generated/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
