/**
 * `im_push_task.status` (migrations/mysql/001_im_push_task.sql): the one list of task status codes.
 * The fan-out writes pending, submitted and failed (processors/fan-out/ledger.ts), the receipt join
 * delivered and failed (processors/receipt-join/records.ts), sinks/mysql stores them.
 */
export const TASK_STATUS = { pending: 0, submitted: 1, delivered: 2, failed: 3, merged: 4 } as const;

export type TaskStatus = (typeof TASK_STATUS)[keyof typeof TASK_STATUS];
