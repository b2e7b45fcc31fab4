import { test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { createClient } from '@clickhouse/client';
import { stackEndpoints, uniqueName } from '../support/stack.ts';

const endpoints = stackEndpoints();

test('MySQL: an upsert on a unique key updates the row instead of adding one', async () => {
  const connection = await mysql.createConnection({ uri: endpoints.mysqlUrl });
  const table = uniqueName('smoke_upsert').replace(/-/g, '_');
  try {
    await connection.query(`CREATE TABLE ${table} (
      id BIGINT AUTO_INCREMENT PRIMARY KEY, device_id VARCHAR(64) NOT NULL, vendor VARCHAR(16) NOT NULL, token VARCHAR(255) NOT NULL,
      UNIQUE KEY uk_device_vendor (device_id, vendor)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    const upsert = `INSERT INTO ${table} (device_id, vendor, token) VALUES ? ON DUPLICATE KEY UPDATE token = VALUES(token)`;
    await connection.query(upsert, [
      [
        ['d1', 'apns', 't-old'],
        ['d2', 'fcm', 't-2'],
      ],
    ]);
    const [result] = await connection.query(upsert, [[['d1', 'apns', 't-new']]]);
    assert.equal((result as mysql.ResultSetHeader).affectedRows, 2, 'MySQL reports 2 for an updated duplicate');
    const [rows] = await connection.query(`SELECT device_id, vendor, token FROM ${table} ORDER BY device_id`);
    assert.deepEqual(rows, [
      { device_id: 'd1', vendor: 'apns', token: 't-new' },
      { device_id: 'd2', vendor: 'fcm', token: 't-2' },
    ]);
  } finally {
    await connection.query(`DROP TABLE IF EXISTS ${table}`);
    await connection.end();
  }
});

test('ClickHouse: inserted rows are counted exactly, and duplicates collapse under FINAL', async () => {
  const client = createClient({ url: endpoints.clickhouseUrl, username: endpoints.clickhouseUser, password: endpoints.clickhousePassword });
  const table = `default.${uniqueName('smoke_events').replace(/-/g, '_')}`;
  try {
    await client.command({ query: `CREATE TABLE ${table} (event_id String, vendor String, ts DateTime) ENGINE = ReplacingMergeTree() ORDER BY event_id` });
    const rows = [
      { event_id: 'e1', vendor: 'apns', ts: '2026-11-29 10:00:00' },
      { event_id: 'e2', vendor: 'fcm', ts: '2026-11-29 10:00:01' },
    ];
    await client.insert({ table, values: rows, format: 'JSONEachRow' });
    await client.insert({ table, values: [rows[0]!], format: 'JSONEachRow' });
    const result = await client.query({ query: `SELECT vendor, count() AS n FROM ${table} FINAL GROUP BY vendor ORDER BY vendor`, format: 'JSONEachRow' });
    assert.deepEqual(await result.json(), [
      { vendor: 'apns', n: '1' },
      { vendor: 'fcm', n: '1' },
    ]);
  } finally {
    await client.command({ query: `DROP TABLE IF EXISTS ${table}` });
    await client.close();
  }
});
