import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { RouterProvider } from "@tanstack/react-router";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { connectFirebase } from "./firebase";
import { router } from "./routes";
import { SessionProvider } from "./session";
import "./styles.css";

const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false, staleTime: 5_000 } } });
const root = createRoot(document.getElementById("root")!);

connectFirebase().then(
  (fb) => {
    // On the emulators only, the browser test reads which answers are cached (their keys, never their data), to
    // check that signing out or switching people leaves none of the previous person's behind.
    if (fb.emulated) Object.assign(window, { __cachedQueryKeys: () => queryClient.getQueryCache().getAll().map((q) => q.queryKey) });
    root.render(
      <StrictMode>
        <QueryClientProvider client={queryClient}>
          <SessionProvider fb={fb}>
            <RouterProvider router={router} />
          </SessionProvider>
        </QueryClientProvider>
      </StrictMode>,
    );
  },
  (err: unknown) =>
    root.render(
      <main id="main">
        <h1>The console could not start</h1>
        <p role="alert">{err instanceof Error ? err.message : String(err)}</p>
      </main>,
    ),
);
