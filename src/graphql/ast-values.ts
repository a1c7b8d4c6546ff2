import { valueFromASTUntyped, type FieldNode, type GraphQLResolveInfo, type ValueNode } from 'graphql';

/** Small readers of a query's AST: directive arguments, their values under the request's variables, response paths. */

export function directiveArgument(node: FieldNode, directive: string, argument: string): ValueNode | undefined {
  return node.directives
    ?.find((candidate) => candidate.name.value === directive)
    ?.arguments?.find((arg) => arg.name.value === argument)?.value;
}

export function stringValue(value: ValueNode, variables: Readonly<Record<string, unknown>>): string | undefined {
  const given = valueFromASTUntyped(value, variables);
  return typeof given === 'string' ? given : undefined;
}

export function booleanValue(value: ValueNode, variables: Readonly<Record<string, unknown>>): boolean | undefined {
  const given = valueFromASTUntyped(value, variables);
  return typeof given === 'boolean' ? given : undefined;
}

/** `a.0.b`: the response path of a field, as execution reports it in `info.path`. */
export function responsePathKey(path: GraphQLResolveInfo['path']): string {
  const keys: (string | number)[] = [];
  for (let current: GraphQLResolveInfo['path'] | undefined = path; current; current = current.prev) keys.push(current.key);
  return keys.reverse().join('.');
}
