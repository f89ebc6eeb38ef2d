// The web dashboard, served by the same process under `/`. Filled in by the dashboard work.
export function mountDashboard(_app: unknown, _ctx: unknown): void {}
