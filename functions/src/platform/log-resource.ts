/**
 * The monitored resource of the service's own log entries (metrics, evidence anchors). It is given explicitly
 * so `@google-cloud/logging` never probes the metadata server: Cloud Run's revision labels on Cloud Functions
 * 2nd gen (K_SERVICE/K_REVISION are set there), `global` anywhere else.
 */
export function logResource(projectId: string): { type: string; labels: Record<string, string> } {
  const service = process.env.K_SERVICE;
  if (service) {
    return {
      type: "cloud_run_revision",
      labels: {
        project_id: projectId,
        service_name: service,
        revision_name: process.env.K_REVISION ?? "",
        configuration_name: process.env.K_CONFIGURATION ?? service,
        location: process.env.FUNCTION_REGION ?? "",
      },
    };
  }
  return { type: "global", labels: { project_id: projectId } };
}
