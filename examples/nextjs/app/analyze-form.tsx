"use client";

import type { FormEvent } from "react";
import { useEffect, useState } from "react";
import type { TaskView } from "../lib/task-view";
import { isDone } from "../lib/task-view";

const SAMPLE_TEXT =
  "A durable queue keeps work safe when processes stop. The API submits a task and answers at once. " +
  "A worker claims the task, reports progress, and stores the result. The page polls the task until the result is there.";

/** How often the page asks for the task's status while it is not done. */
const POLL_MS = 300;

export function AnalyzeForm() {
  const [text, setText] = useState(SAMPLE_TEXT);
  const [submitting, setSubmitting] = useState(false);
  const [task, setTask] = useState<TaskView | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setSubmitting(true);
    setProblem(null);
    try {
      const res = await fetch("/api/tasks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text }),
      });
      const body = (await res.json()) as TaskView & { error?: unknown };
      if (!res.ok) throw new Error(typeof body.error === "string" ? body.error : `HTTP ${res.status}`);
      setTask(body);
    } catch (err) {
      setProblem(`Could not submit: ${(err as Error).message}`);
    } finally {
      setSubmitting(false);
    }
  }

  // Poll the task until it is done. A new submit (another id) or leaving the
  // page stops the previous loop.
  const id = task?.id;
  const done = task ? isDone(task.status) : true;
  useEffect(() => {
    if (!id || done) return;
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const res = await fetch(`/api/tasks/${id}`, { signal: controller.signal, cache: "no-store" });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        const next = (await res.json()) as TaskView;
        setTask(next);
        if (isDone(next.status)) return;
      } catch (err) {
        if (controller.signal.aborted) return;
        setProblem(`Lost contact with the API (${(err as Error).message}); retrying…`);
      }
      timer = setTimeout(() => void poll(), POLL_MS);
    };
    timer = setTimeout(() => void poll(), POLL_MS);
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [id, done]);

  return (
    <>
      <form onSubmit={(event) => void onSubmit(event)}>
        <label htmlFor="text">Text to analyze</label>
        <textarea id="text" value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit" disabled={submitting || text.trim() === ""}>
          {submitting ? "Submitting…" : "Analyze"}
        </button>
      </form>
      {problem && <p className="error">{problem}</p>}
      {task && <TaskPanel task={task} />}
    </>
  );
}

function TaskPanel({ task }: { task: TaskView }) {
  const percent = Math.round((task.progress ?? 0) * 100);
  return (
    <section className="task" aria-live="polite">
      <p>
        Task <code>{task.id}</code> <span className={`status ${task.status}`} data-testid="status">{task.status}</span>
        {task.attempt > 1 && <> (attempt {task.attempt})</>}
      </p>
      {!isDone(task.status) && (
        <>
          <progress value={task.progress ?? undefined} max={1} />
          <p data-testid="progress">
            {percent}% {task.message ? `— ${task.message}` : "— waiting for a worker"}
          </p>
        </>
      )}
      {task.status === "succeeded" && task.result && (
        <>
          <p className="result" data-testid="result">
            {task.result.words} words, {task.result.sentences} sentences, about {task.result.readingTimeSeconds} s to read
          </p>
          <p>Top words: {task.result.topWords.map(({ word, count }) => `${word} (${count})`).join(", ")}</p>
        </>
      )}
      {task.status === "failed" && <p className="error">Failed: {task.error?.message ?? "unknown error"}</p>}
      {task.status === "canceled" && <p className="error">Canceled.</p>}
    </section>
  );
}
