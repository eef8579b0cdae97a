"""The session: what stands between the `Client` and its transport (the channel, the handshake,
request ids and deadlines, dispatch of the server's messages, listen streams, retries).
"""
