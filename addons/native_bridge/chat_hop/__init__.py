"""The chat hop (agent -> gateway): the mitmproxy addon that reads each chat request's tool
history (addon.py), Responses over WebSocket (websocket.py), the job it runs inline or in the
worker (jobs.py), and a request's verdict (verdict.py)."""
