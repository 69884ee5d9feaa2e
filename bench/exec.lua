-- wrk script: POST /exec running `true` without a shell, as one agent.
wrk.method = "POST"
wrk.body = '{"agent_id":"bench","argv":["true"]}'
wrk.headers["Content-Type"] = "application/json"
