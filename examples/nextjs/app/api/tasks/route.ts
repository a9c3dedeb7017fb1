import { getCairnQ } from "../../../lib/cairnq";
import { taskView } from "../../../lib/task-view";
import { analyzeText, MAX_TEXT_LENGTH } from "../../../lib/tasks";

/**
 * POST /api/tasks `{ "text": "…" }` → 202 with the new task. The work runs in
 * the worker process; poll GET /api/tasks/:id for progress and the result.
 */
export async function POST(request: Request): Promise<Response> {
  const body = (await request.json().catch(() => null)) as { text?: unknown } | null;
  const text = typeof body?.text === "string" ? body.text.trim() : "";
  if (text.length === 0 || text.length > MAX_TEXT_LENGTH) {
    return Response.json({ error: `body.text must be a non-empty string of at most ${MAX_TEXT_LENGTH} characters` }, { status: 400 });
  }
  const task = await getCairnQ().submit(analyzeText, { text });
  return Response.json(taskView(task), { status: 202, headers: { location: `/api/tasks/${task.id}` } });
}
