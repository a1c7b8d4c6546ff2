import { isResourceType } from '../../fhir/definitions.js';
import { issue } from '../../fhir/outcome.js';
import type { IssueType } from '../../fhir/resources.js';
import { isRecord, type OperationOutcomeIssue, type Resource } from '../../fhir/types.js';
import type { ResourceContext } from '../invariants/evaluate.js';
import type { ProfileBinding } from '../resource-checks.js';
import { addedBinding, codesOf, deferredBinding } from './bindings.js';
import { defaultDiscriminators, followsAll, matchesSlice, type SliceLookup } from './discriminators.js';
import { valueInvariants } from './invariants.js';
import type { CompiledProfile, ProfileNode } from './tree.js';
import { equalsExactly, matchesPattern, shown, valuesOf, type Found } from './values.js';

/**
 * Validation of a resource against one profile's snapshot: cardinality (slices included),
 * `fixed[x]` and `pattern[x]`, the types a choice may take, the types `targetProfile` allows a
 * reference to name (from the reference's text: nothing is resolved), slicing (which slice each
 * value belongs to, closed, openAtEnd and ordered), extensions checked against their own
 * definition by url (on any element, listed by the profile or not), values of a type the profile
 * narrows to a data type profile (`SimpleQuantity`) against that profile, and required bindings
 * the profile adds whose value set expands from the shipped definitions. `mustSupport` means
 * nothing to a server. The walk evaluates the constraints only it can place (inside slices, and in
 * extension and data type profiles); the others are `profileInvariants`' (./invariants.ts). The
 * base definition's structure was checked before.
 */

/** The definitions a profile refers to: other profiles and extension definitions, by canonical url. */
export interface ProfileSource {
  compiled(url: string): CompiledProfile | undefined;
}

const MAX_ISSUES = 100;
/** Extensions inside extensions inside...: beyond any real resource. */
const MAX_DEPTH = 40;

export interface WalkOptions {
  readonly warnings: boolean;
  /** Receives the values of required bindings the shipped definitions cannot decide, for the terminology engine. */
  readonly bindings?: ProfileBinding[];
}

export function validateAgainstProfile(resource: Resource, profile: CompiledProfile, source: ProfileSource, options: WalkOptions): OperationOutcomeIssue[] {
  const walk = new ProfileWalk(source, profile.url, { resource, rootResource: resource }, options.warnings, options.bindings);
  if (resource.resourceType !== profile.type) {
    walk.fail('invalid', resource.resourceType, 'type', `The profile constrains ${profile.type}, not ${resource.resourceType}`);
  } else {
    walk.children(resource, profile.root, resource.resourceType);
    walk.unlistedExtensions(resource, resource.resourceType);
  }
  return walk.issues;
}

class ProfileWalk {
  readonly issues: OperationOutcomeIssue[] = [];
  private depth = 0;
  /** Extensions already checked against their definition, so that none is checked twice. */
  private readonly checkedExtensions = new Set<object>();

  constructor(
    private readonly source: ProfileSource,
    private profileUrl: string,
    private readonly context: ResourceContext,
    private readonly warnings: boolean,
    private readonly bindings: ProfileBinding[] | undefined,
  ) {}

  children(owner: Record<string, unknown>, node: ProfileNode, location: string): void {
    if (this.depth >= MAX_DEPTH) return;
    this.depth++;
    for (const child of node.children) this.element(valuesOf(owner, child, location), child, location);
    this.depth--;
  }

  private element(found: Found[], node: ProfileNode, location: string): void {
    // Most elements of a snapshot are absent or repeat the base: nothing to check for them. An
    // absent element still breaks a slice that needs values (bodyweight's code.coding:BodyWeightCode).
    if (!(this.warnings ? node.advises : node.constrains) || (found.length === 0 && node.min === 0 && !node.slices.some((slice) => slice.min > 0))) return;
    const at = `${location}.${node.name}${node.isChoice ? '[x]' : ''}`;
    this.cardinality(found.length, node, at);
    for (const item of found) this.item(item, node);
    if (node.slices.length > 0) this.slicing(found, node, at);
  }

  private cardinality(count: number, node: ProfileNode, location: string): void {
    if (count >= node.min && count <= node.max) return;
    const rule = `cardinality ${node.min}..${node.max === Infinity ? '*' : node.max} of ${node.id}`;
    if (count < node.min) this.fail('required', location, rule, `${node.id} needs at least ${node.min} value${node.min > 1 ? 's' : ''}, found ${count}`);
    else this.fail('structure', location, rule, `${node.id} allows at most ${node.max} value${node.max > 1 ? 's' : ''}, found ${count}`);
  }

  private item(found: Found, node: ProfileNode): void {
    if (node.isChoice) this.checkChoiceType(found, node);
    if (node.required) this.checkRequiredValue(found, node);
    if (node.invariants.length > 0) this.checkInvariants(found, node);
    this.checkBinding(found, node);
    this.checkReferenceTarget(found, node);
    if (!isRecord(found.value)) return;
    if (isExtensionList(node)) this.checkExtension(found.value, found.location);
    else this.checkTypeProfiles(found, node);
    if (node.children.length > 0) this.children(found.value, node, found.location);
  }

  private checkInvariants(found: Found, node: ProfileNode): void {
    for (const broken of valueInvariants(found, node, this.context, this.warnings, this.profileUrl)) {
      if (this.issues.length < MAX_ISSUES) this.issues.push(broken);
    }
  }

  /** A value of a type the element narrows to a data type profile (`Quantity` to SimpleQuantity) is checked against that profile. */
  private checkTypeProfiles(found: Found, node: ProfileNode): void {
    const types = node.element.type ?? [];
    for (const type of types) {
      if (type.code === 'Extension' || (types.length > 1 && type.code !== found.type)) continue;
      for (const url of type.profile ?? []) {
        const profile = typeof url === 'string' && url !== this.profileUrl ? this.source.compiled(url) : undefined;
        if (profile?.type === type.code && !isResourceType(profile.type)) this.within(profile, found);
      }
    }
  }

  private checkChoiceType(found: Found, node: ProfileNode): void {
    if (allowsType(node, found)) return;
    const codes = (node.element.type ?? []).map((type) => type.code);
    this.fail('structure', found.location, `types of ${node.id}`, `Type ${found.type} is not allowed here; the profile allows ${codes.join(', ')}`);
  }

  private checkRequiredValue(found: Found, node: ProfileNode): void {
    const { value, exact, key } = node.required!;
    if (exact ? equalsExactly(found.value, value) : matchesPattern(found.value, value)) return;
    const what = exact ? 'must be exactly' : 'must match the pattern';
    this.fail('value', found.location, `${key} of ${node.id}`, `The value ${shown(found.value)} ${what} ${shown(value)}`);
  }

  /**
   * A binding the profile adds: required ones on every write, extensible and preferred ones as
   * warnings in `$validate` only. Judged in memory when the value set expands from the shipped
   * definitions, else deferred to the terminology engine.
   */
  private checkBinding(found: Found, node: ProfileNode): void {
    const binding = addedBinding(node.element);
    if (!binding || (binding.strength !== 'required' && !this.warnings)) return;
    const { allowed } = binding;
    if (!allowed) {
      const types = node.element.type ?? [];
      const type = found.type ?? (types.length === 1 ? types[0].code : undefined);
      const deferred = deferredBinding(found.value, type, binding, found.location, this.profileUrl);
      if (deferred && this.bindings) this.bindings.push(deferred);
      return;
    }
    const given = codesOf(found.value);
    if (given.length === 0 || given.some((code) => allowed.has(code))) return;
    const text = `${given.map((code) => `"${code}"`).join(', ')} is not in the value set ${binding.valueSet}`;
    if (binding.strength === 'required') this.fail('code-invalid', found.location, `required binding of ${node.id}`, text);
    else this.warn(found.location, `${binding.strength} binding of ${node.id}`, `${text}; ${BINDING_ADVICE[binding.strength]}`);
  }

  private checkReferenceTarget(found: Found, node: ProfileNode): void {
    if (!isRecord(found.value) || typeof found.value.reference !== 'string') return;
    const targets = (node.element.type ?? []).filter((type) => type.code === 'Reference').flatMap((type) => (type.targetProfile ?? []).filter((url): url is string => typeof url === 'string'));
    if (targets.length === 0) return;
    const named = referencedType(found.value.reference);
    if (named === undefined) return;
    const allowed = targets.map((url) => this.source.compiled(url)?.type);
    // A target profile the server does not know could constrain any type.
    if (allowed.includes(named) || allowed.includes('Resource') || allowed.includes(undefined)) return;
    this.fail('structure', `${found.location}.reference`, `targetProfile of ${node.id}`, `A reference to ${named} is not allowed here; it must refer to ${[...new Set(allowed)].join(', ')}`);
  }

  /** An extension whose url names a known definition is checked against it. */
  private checkExtension(extension: Record<string, unknown>, location: string): void {
    this.checkedExtensions.add(extension);
    if (typeof extension.url !== 'string' || extension.url === this.profileUrl) return;
    const definition = this.source.compiled(extension.url);
    if (definition?.type === 'Extension') this.within(definition, { value: extension, location, type: 'Extension' });
  }

  /** Checks a value against another definition (an extension's, a data type profile), its root's constraints included. */
  private within(definition: CompiledProfile, found: Found): void {
    const outer = this.profileUrl;
    this.profileUrl = definition.url;
    if (definition.root.invariants.length > 0) this.checkInvariants(found, definition.root);
    this.children(found.value as Record<string, unknown>, definition.root, found.location);
    this.profileUrl = outer;
  }

  /**
   * Extensions on elements the profile does not list (`Patient.name[0].extension[0]`, which a
   * snapshot listing `Patient.name` only never reaches) are checked against their definitions too.
   */
  unlistedExtensions(value: unknown, location: string): void {
    if (Array.isArray(value)) {
      value.forEach((item, index) => this.unlistedExtensions(item, `${location}[${index}]`));
      return;
    }
    if (!isRecord(value)) return;
    for (const key in value) {
      const child = value[key];
      const at = `${location}.${key}`;
      if ((key === 'extension' || key === 'modifierExtension') && Array.isArray(child)) {
        child.forEach((item, index) => {
          if (isRecord(item) && !this.checkedExtensions.has(item)) this.checkExtension(item, `${at}[${index}]`);
        });
      }
      if (typeof child === 'object' && child !== null) this.unlistedExtensions(child, at);
    }
  }

  private slicing(found: Found[], node: ProfileNode, location: string): void {
    const slicing = node.element.slicing;
    const discriminators = slicing?.discriminator ?? defaultDiscriminators(node);
    // Which slice a value belongs to cannot be told without discriminators, or without following
    // their path (`resolve().code`): the slicing is left unchecked rather than every value reported.
    if (discriminators.length === 0 || !followsAll(discriminators)) return;
    const rules = slicing?.rules ?? 'open';
    const assigned = new Map<ProfileNode, Found[]>(node.slices.map((slice) => [slice, []]));
    const lookup: SliceLookup = { conforms: (item, url) => this.conformsTo(item, url), definition: (url) => this.source.compiled(url)?.root };
    let furthest = -1;
    let unmatchedSeen = false;
    for (const item of found) {
      const index = node.slices.findIndex((slice) => matchesSlice(item, slice, discriminators, lookup));
      if (index < 0) {
        unmatchedSeen = true;
        // A choice's value of a type the element itself does not allow was reported as such already.
        if (rules === 'closed' && !(node.isChoice && !allowsType(node, item))) {
          const names = node.slices.map((slice) => slice.element.sliceName).join(', ');
          this.fail('structure', item.location, `closed slicing of ${node.id}`, `The value matches none of the slices ${names}, and no other value is allowed`);
        }
        continue;
      }
      if (rules === 'openAtEnd' && unmatchedSeen) {
        this.fail('structure', item.location, `openAtEnd slicing of ${node.id}`, 'Values that match no slice must come after those that do');
      }
      if (slicing?.ordered && index < furthest) {
        this.fail('structure', item.location, `ordered slicing of ${node.id}`, `The value belongs to slice ${node.slices[index].element.sliceName}, which comes before slice ${node.slices[furthest].element.sliceName}`);
      }
      furthest = Math.max(furthest, index);
      assigned.get(node.slices[index])!.push(item);
    }
    for (const [slice, items] of assigned) {
      this.cardinality(items.length, slice, location);
      for (const item of items) this.item(item, slice);
    }
  }

  /** For the `profile` discriminator: whether a value conforms to a profile, reporting nothing. */
  private conformsTo(found: Found, url: string): boolean {
    const profile = this.source.compiled(url);
    if (!profile || !isRecord(found.value)) return false;
    const context = typeof found.value.resourceType === 'string' ? { resource: found.value, rootResource: this.context.rootResource } : this.context;
    const trial = new ProfileWalk(this.source, url, context, false, undefined);
    trial.depth = this.depth;
    if (typeof found.value.resourceType === 'string') {
      if (found.value.resourceType !== profile.type) return false;
      trial.children(found.value, profile.root, found.value.resourceType);
    } else trial.children(found.value, profile.root, found.location);
    return trial.issues.length === 0;
  }

  fail(code: IssueType, location: string, rule: string, text: string): void {
    if (this.issues.length >= MAX_ISSUES) return;
    this.issues.push(issue(code, `${text} (profile ${this.profileUrl}, rule: ${rule})`, location));
  }

  private warn(location: string, rule: string, text: string): void {
    if (this.issues.length < MAX_ISSUES) this.issues.push({ ...issue('code-invalid', `${text} (profile ${this.profileUrl}, rule: ${rule})`, location), severity: 'warning' });
  }
}

const BINDING_ADVICE = {
  extensible: 'use a code from it when one fits (extensible binding)',
  preferred: 'a code from it is preferred (preferred binding)',
} as const;

function isExtensionList(node: ProfileNode): boolean {
  return !node.element.sliceName && (node.name === 'extension' || node.name === 'modifierExtension');
}

/** `Patient/123`, `https://example.org/fhir/Patient/123/_history/2`: the type named; undefined for `#local` and `urn:` references. */
function referencedType(reference: string): string | undefined {
  const match = /(?:^|\/)([A-Z][A-Za-z]+)\/[A-Za-z0-9\-.]{1,64}(?:\/_history\/[^/]+)?$/.exec(reference);
  return match?.[1];
}

/** Whether a choice element's own types take the value's type (a value of unknown type passes). */
function allowsType(node: ProfileNode, found: Found): boolean {
  return found.type === undefined || (node.element.type ?? []).some((type) => type.code === found.type);
}
