import { AnalyzeForm } from "./analyze-form";

export default function Home() {
  return (
    <main>
      <h1>Text analysis on CairnQ</h1>
      <p className="lead">
        Submitting calls <code>POST /api/tasks</code>, which only writes a task to the database. A separate worker process
        (<code>pnpm worker</code>) claims it and reports progress; this page polls <code>GET /api/tasks/:id</code> until the
        result is in.
      </p>
      <AnalyzeForm />
    </main>
  );
}
