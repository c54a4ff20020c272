#!/usr/bin/env sh
# Start the GPU worker: one process (the model lives in GPU memory once), models load in the background.
set -eu
: "${WORKER_MODEL_DIR:?set WORKER_MODEL_DIR to the VLM2Vec-V2 weights directory}"
if [ -z "${WORKER_TOKEN:-}" ] && [ -z "${GPU_WORKER_TOKEN:-}" ]; then
    echo "set WORKER_TOKEN (or GPU_WORKER_TOKEN): the worker refuses unauthenticated calls" >&2
    exit 1
fi
exec uvicorn gpu_worker.app:create_app --factory \
    --host "${WORKER_HOST:-0.0.0.0}" --port "${WORKER_PORT:-8000}" \
    --workers 1 --timeout-keep-alive 30 --log-level "${WORKER_LOG_LEVEL:-info}"
