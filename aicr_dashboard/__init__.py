"""`kubectl aicr dashboard`: a page on the approver's own machine of what waits across the fleet, approving as them.

A long-lived program on the core, beside `aicr_admission`: only its command
(`aicr_commands.dashboard`) imports it, inside its run, so that no other command pays for the web
stack (Starlette, uvicorn, Jinja2: the optional extra `dashboard`). Its modules, each with one job:

- `loopback`: the addresses it may listen on, and the Host values it answers;
- `url_file`: the URL with its token, in a file only the user may read;
- `envelope`: what every request passes before any route (Host, who, Origin and form token, the
  bounded urlencoded body, the headers on every answer);
- `fleet_model`, `cluster_watch`: the clusters' rollouts kept in memory by one watch each
  (`aicr_core.domain.live_listing`), served with no API request per view;
- `page_routes`, `page_render`, `event_stream`: the routes on the raw path, the pages (Jinja2 with
  autoescape), the server-sent events; `cli_words`: a row in the CLI's words (its layout, by entry point);
- `page_actions`, `equivalent`: the writes and the Check through the CLI's own write
  (`aicr_core.domain.rollout_write`, the form read as the CLI's flags by
  `aicr_core.framework.write_form`), the equivalent command;
- `serving`: the server (uvicorn), its URL line and its stop at SIGINT or SIGTERM.

docs/dashboard.md is the contract.
"""
