import { getCairnQ } from "../../../../lib/cairnq";
import { taskView } from "../../../../lib/task-view";

/** GET /api/tasks/:id → the task's status, progress, message and, once done, result or error. */
export async function GET(_request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await params;
  const task = await getCairnQ().get(id);
  if (!task) return Response.json({ error: `no task ${id}` }, { status: 404 });
  // Status changes from one poll to the next: never cache it.
  return Response.json(taskView(task), { headers: { "cache-control": "no-store" } });
}
