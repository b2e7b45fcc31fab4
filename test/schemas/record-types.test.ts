/**
 * The TypeScript record types (processors/model/records.ts) against schemas/*.avsc: each schema has
 * one interface naming it in its doc comment, with exactly the schema's fields (nested records
 * included), `| null` exactly where the schema has a union with null, `?` only where the schema has
 * a default, and each enum's symbols as its string literals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { ROOT } from '../../stack/paths.ts';

const RECORDS = 'processors/model/records.ts';

/**
 * Schemas without a TypeScript record, each with why: the DLQ forwards the failed record's own bytes
 * with `dlq.*` headers (topology/dlq.ts) and never decodes an envelope.
 */
const WITHOUT_RECORD_TYPE = new Set(['dlq-envelope.avsc']);

type Avro = string | { type: string; name?: string; fields?: AvroField[]; symbols?: string[]; items?: Avro; values?: Avro } | Avro[];
interface AvroField {
  name: string;
  type: Avro;
  default?: unknown;
}

interface Declarations {
  interfaces: Map<string, ts.InterfaceDeclaration>;
  aliases: Map<string, ts.TypeNode>;
}

function declarations(source: ts.SourceFile): Declarations {
  const interfaces = new Map<string, ts.InterfaceDeclaration>();
  const aliases = new Map<string, ts.TypeNode>();
  for (const statement of source.statements) {
    if (ts.isInterfaceDeclaration(statement)) interfaces.set(statement.name.text, statement);
    if (ts.isTypeAliasDeclaration(statement)) aliases.set(statement.name.text, statement.type);
  }
  return { interfaces, aliases };
}

/** The members of an interface, those of the interfaces it extends first. */
function members(decl: Declarations, node: ts.InterfaceDeclaration): Map<string, ts.PropertySignature> {
  const out = new Map<string, ts.PropertySignature>();
  for (const clause of node.heritageClauses ?? []) {
    for (const parent of clause.types) {
      const base = decl.interfaces.get(parent.expression.getText());
      assert.ok(base, `${node.name.text} extends ${parent.expression.getText()}, which ${RECORDS} does not declare`);
      for (const [name, member] of members(decl, base)) out.set(name, member);
    }
  }
  for (const member of node.members) if (ts.isPropertySignature(member)) out.set(member.name.getText(), member);
  return out;
}

/** Follows type aliases and parentheses to the type written out. */
function resolve(decl: Declarations, type: ts.TypeNode): ts.TypeNode {
  if (ts.isParenthesizedTypeNode(type)) return resolve(decl, type.type);
  if (ts.isTypeReferenceNode(type) && !type.typeArguments) {
    const alias = decl.aliases.get(type.typeName.getText());
    if (alias) return resolve(decl, alias);
  }
  return type;
}

const isNull = (t: ts.TypeNode) => ts.isLiteralTypeNode(t) && t.literal.kind === ts.SyntaxKind.NullKeyword;

/** The type without `| null`, and whether it had it. */
function nonNull(decl: Declarations, type: ts.TypeNode): { type: ts.TypeNode; nullable: boolean } {
  const t = resolve(decl, type);
  if (!ts.isUnionTypeNode(t) || !t.types.some(isNull)) return { type: t, nullable: false };
  const rest = t.types.filter((u) => !isNull(u));
  return { type: rest.length === 1 ? resolve(decl, rest[0]!) : t, nullable: true };
}

function stringLiterals(decl: Declarations, type: ts.TypeNode): string[] | undefined {
  const t = resolve(decl, type);
  const parts = ts.isUnionTypeNode(t) ? t.types.map((u) => resolve(decl, u)) : [t];
  const out: string[] = [];
  for (const p of parts) {
    if (!ts.isLiteralTypeNode(p) || !ts.isStringLiteral(p.literal)) return undefined;
    out.push(p.literal.text);
  }
  return out;
}

/** The members of a nested record's TypeScript type: an object literal type or an interface. */
function recordMembers(decl: Declarations, type: ts.TypeNode): Map<string, ts.PropertySignature> | undefined {
  if (ts.isTypeLiteralNode(type)) return new Map(type.members.filter(ts.isPropertySignature).map((m) => [m.name.getText(), m]));
  if (ts.isTypeReferenceNode(type)) {
    const target = decl.interfaces.get(type.typeName.getText());
    return target ? members(decl, target) : undefined;
  }
  return undefined;
}

/** Every difference between a record schema's fields and the TypeScript members. */
function compare(decl: Declarations, where: string, fields: readonly AvroField[], tsMembers: Map<string, ts.PropertySignature>): string[] {
  const problems: string[] = [];
  for (const name of tsMembers.keys()) if (!fields.some((f) => f.name === name)) problems.push(`${where}.${name}: not in the schema`);
  for (const field of fields) {
    const member = tsMembers.get(field.name);
    if (!member?.type) {
      problems.push(`${where}.${field.name}: missing in ${RECORDS}`);
      continue;
    }
    const branches = Array.isArray(field.type) ? field.type : [field.type];
    const avroNullable = branches.includes('null');
    const avroValue = branches.filter((b) => b !== 'null');
    const { type, nullable } = nonNull(decl, member.type);
    if (nullable !== avroNullable) problems.push(`${where}.${field.name}: ${avroNullable ? 'nullable in the schema, not in TypeScript' : 'nullable in TypeScript, not in the schema'}`);
    if (member.questionToken && field.default === undefined) problems.push(`${where}.${field.name}: optional in TypeScript but the schema has no default`);
    if (avroValue.length !== 1) continue;
    const value = avroValue[0]!;
    if (typeof value !== 'object' || Array.isArray(value)) continue;
    if (value.type === 'enum') {
      const literals = stringLiterals(decl, type);
      if (!literals) problems.push(`${where}.${field.name}: an enum in the schema, not a union of string literals`);
      else if ([...literals].sort().join() !== [...value.symbols!].sort().join()) problems.push(`${where}.${field.name}: symbols ${value.symbols!.join('|')} but TypeScript has ${literals.join('|')}`);
    }
    if (value.type === 'record') {
      const nested = recordMembers(decl, type);
      if (!nested) problems.push(`${where}.${field.name}: a record in the schema, not an object type`);
      else problems.push(...compare(decl, `${where}.${field.name}`, value.fields!, nested));
    }
    if (value.type === 'array' && typeof value.items === 'object' && !Array.isArray(value.items) && value.items.type === 'record') {
      const nested = ts.isArrayTypeNode(type) ? recordMembers(decl, resolve(decl, type.elementType)) : undefined;
      if (!nested) problems.push(`${where}.${field.name}: an array of records in the schema, not an array of an object type`);
      else problems.push(...compare(decl, `${where}.${field.name}[]`, value.items.fields!, nested));
    }
  }
  return problems;
}

/** Every difference between schemas/ and the record types in `recordsSource`. */
function check(recordsSource: string): string[] {
  const source = ts.createSourceFile(RECORDS, recordsSource, ts.ScriptTarget.Latest, true);
  const decl = declarations(source);
  const bySchema = new Map<string, ts.InterfaceDeclaration>();
  for (const node of decl.interfaces.values()) {
    const comments = ts.getLeadingCommentRanges(recordsSource, node.pos) ?? [];
    for (const c of comments) for (const m of recordsSource.slice(c.pos, c.end).matchAll(/([a-z-]+\.avsc)/g)) bySchema.set(m[1]!, node);
  }
  const problems: string[] = [];
  for (const file of readdirSync(join(ROOT, 'schemas')).filter((f) => f.endsWith('.avsc')).sort()) {
    if (WITHOUT_RECORD_TYPE.has(file)) continue;
    const schema = JSON.parse(readFileSync(join(ROOT, 'schemas', file), 'utf8')) as { fields: AvroField[] };
    const node = bySchema.get(file);
    if (!node) {
      problems.push(`${file}: no interface in ${RECORDS} names it`);
      continue;
    }
    problems.push(...compare(decl, `${file} ${node.name.text}`, schema.fields, members(decl, node)));
  }
  return problems;
}

const recordsText = readFileSync(join(ROOT, RECORDS), 'utf8');

test(`every schema's fields, nullability, defaults and enums match its record type in ${RECORDS}`, () => {
  assert.deepEqual(check(recordsText), []);
});

test('the check reports a drifted record type', () => {
  // The drift this guards against: a schema field (push-outcome's token_hash) missing from a copy of the type.
  const withoutTokenHash = recordsText.replace(/\n\s*token_hash\?: string \| null;/, '\n');
  assert.notEqual(withoutTokenHash, recordsText);
  assert.deepEqual(check(withoutTokenHash), ['push-outcome.avsc PushOutcome.token_hash: missing in processors/model/records.ts']);
  const notNullable = recordsText.replace('device_id: string | null;\n  conv_id: string;\n  seq: number;\n  msg_id: string;\n  app_id: string;\n  platform', 'device_id: string;\n  conv_id: string;\n  seq: number;\n  msg_id: string;\n  app_id: string;\n  platform');
  assert.deepEqual(check(notNullable), ['push-outcome.avsc PushOutcome.device_id: nullable in the schema, not in TypeScript']);
  const fewerKinds = recordsText.replace("export type DispatchKind = 'LEADING' | 'TRAILING' | 'IMMEDIATE' | 'DEFERRED';", "export type DispatchKind = 'LEADING' | 'TRAILING' | 'IMMEDIATE';");
  assert.deepEqual(check(fewerKinds), ['push-dispatch.avsc PushDispatch.kind: symbols LEADING|TRAILING|IMMEDIATE|DEFERRED but TypeScript has LEADING|TRAILING|IMMEDIATE']);
});
