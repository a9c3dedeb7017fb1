import type { Task, TaskStatus } from "cairnq";
import type { AnalyzeResult } from "./tasks";

/**
 * The JSON the route handlers answer with, and the page renders: the parts of
 * a task row a browser needs (not its payload, worker id or lease).
 */
export interface TaskView {
  id: string;
  status: TaskStatus;
  progress: number | null;
  message: string | null;
  attempt: number;
  result: AnalyzeResult | null;
  error: { code?: string; message?: string } | null;
}

export function taskView(task: Task): TaskView {
  return {
    id: task.id,
    status: task.status,
    progress: task.progress,
    message: task.message,
    attempt: task.attempt,
    result: task.result as AnalyzeResult | null,
    error: task.error as TaskView["error"],
  };
}

/** Whether a status is final: the page stops polling there. */
export function isDone(status: TaskStatus): boolean {
  return status === "succeeded" || status === "failed" || status === "canceled";
}
