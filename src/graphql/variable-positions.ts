import {
  GraphQLError,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  isNullableType,
  isTypeSubTypeOf,
  specifiedRules,
  typeFromAST,
  validate,
  VariablesInAllowedPositionRule,
  type GraphQLInputType,
  type GraphQLSchema,
  type GraphQLType,
  type ValidationContext,
  type ValidationRule,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * The validation rule on variable positions, with one widening: a variable of a scalar or enum
 * type may be used where a list of that type is expected (`query($name: String) { PatientList(name:
 * $name) }`), as a literal may. Medplum's schema types search arguments as `String` where Flint's
 * take `[String!]` (several values are AND), so queries written for it declare scalar variables.
 * The resolvers of list arguments of leaf types take a single value as a one-item list. Everything
 * else is graphql-js's rule (https://spec.graphql.org/draft/#sec-All-Variable-Usages-are-Allowed).
 */
export const VariablesInAllowedPositionOrListRule: ValidationRule = (context: ValidationContext) => {
  const definitions = new Map<string, { type: GraphQLType | undefined; defaultValue: ValueNode | undefined; node: VariableDefinitionNode }>();
  return {
    OperationDefinition: {
      enter() {
        definitions.clear();
      },
      leave(operation) {
        const schema = context.getSchema();
        for (const { node, type, defaultValue, parentType } of context.getRecursiveVariableUsages(operation)) {
          const definition = definitions.get(node.name.value);
          if (!definition?.type || !type) continue;
          const varType = definition.type;
          if (!allowed(schema, varType, definition.defaultValue, type, defaultValue !== undefined)) {
            const text = `Variable "$${node.name.value}" of type "${String(varType)}" used in position expecting type "${String(type)}".`;
            context.reportError(new GraphQLError(text, { nodes: [definition.node, node] }));
          }
          if (isInputObjectType(parentType) && parentType.isOneOf && isNullableType(varType)) {
            const text = `Variable "$${node.name.value}" is of type "${String(varType)}" but must be non-nullable to be used for OneOf Input Object "${String(parentType)}".`;
            context.reportError(new GraphQLError(text, { nodes: [definition.node, node] }));
          }
        }
      },
    },
    VariableDefinition(node) {
      definitions.set(node.variable.name.value, { type: typeFromAST(context.getSchema(), node.type), defaultValue: node.defaultValue, node });
    },
  };
};

function allowed(schema: GraphQLSchema, varType: GraphQLType, varDefault: ValueNode | undefined, location: GraphQLInputType, locationHasDefault: boolean): boolean {
  if (isNonNullType(location) && !isNonNullType(varType)) {
    const hasDefault = (varDefault !== undefined && varDefault.kind !== 'NullValue') || locationHasDefault;
    return hasDefault && allowed(schema, varType, varDefault, location.ofType, false);
  }
  if (isTypeSubTypeOf(schema, varType, location)) return true;
  const list = isNonNullType(location) ? location.ofType : location;
  if (!isListType(list)) return false;
  const item = list.ofType as GraphQLType;
  const single = isNonNullType(varType) ? varType.ofType : varType;
  // A single value in a list position: null (a nullable variable) is no item, as for a literal null.
  return isLeafType(single) && isTypeSubTypeOf(schema, single, isNonNullType(item) ? item.ofType : item);
}

const widen = (rule: ValidationRule): ValidationRule => (rule === VariablesInAllowedPositionRule ? VariablesInAllowedPositionOrListRule : rule);

/** Validates with the rule above in place of the standard one (and whatever rules other plugins add). */
export function useVariablesInListPositions(): Plugin {
  return {
    onValidate({ setValidationFn }) {
      setValidationFn((schema, document, rules, ...rest) => validate(schema, document, (rules ?? specifiedRules).map(widen), ...rest));
    },
  };
}
