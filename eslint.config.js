import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.stack/', 'dist/', 'bench/results/'] },
  { files: ['**/*.mjs'], languageOptions: { globals: { console: 'readonly', process: 'readonly' } } },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    files: ['processors/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: ['kafkajs', '@kafkajs/confluent-schema-registry', 'mysql2', '@clickhouse/client'], patterns: ['kafkajs/*'] }],
    },
  },
);
