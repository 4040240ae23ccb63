"""The feed as a DV reads it: its sealed cursors (feed_cursor), the codec of every opaque
cursor the API hands out (cursor_codec), and the CloudEvents its events become
(cloudevents)."""
