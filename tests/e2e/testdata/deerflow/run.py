"""Drives DeerFlow's BrowserlessClient (browserless_client.py, unchanged) against a base URL.

usage: run.py BASE_URL TOKEN PAGE_URL OUT_DIR
Writes OUT_DIR/content.html, OUT_DIR/shot.<ext> and OUT_DIR/result.json (the client's results).
"""

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browserless_client import BrowserlessClient, BrowserlessFetchResult, BrowserlessScreenshotResult  # noqa: E402


async def main(base, token, page, out):
    client = BrowserlessClient(base, token=token, timeout_s=120)
    result = {}
    fetched = await client.fetch_html_with_status(page, wait_for_event="load", wait_for_selector="body",
                                                  reject_resource_types=["font"])
    if isinstance(fetched, BrowserlessFetchResult):
        with open(os.path.join(out, "content.html"), "w", encoding="utf-8") as f:
            f.write(fetched.html)
        result["fetch"] = {"code": fetched.target_status_code, "status": fetched.target_status}
    else:
        result["fetch"] = {"error": fetched}
    missing = await client.fetch_html_with_status(page.rstrip("/") + "/status/404")
    result["fetch404"] = ({"code": missing.target_status_code, "status": missing.target_status}
                          if isinstance(missing, BrowserlessFetchResult) else {"error": missing})
    shot = await client.capture_screenshot(page, full_page=False, output_format="png", viewport={"width": 800, "height": 600})
    if isinstance(shot, BrowserlessScreenshotResult):
        with open(os.path.join(out, "shot.png"), "wb") as f:
            f.write(shot.content)
        result["screenshot"] = {"code": shot.target_status_code, "content_type": shot.content_type, "final_url": shot.final_url}
    else:
        result["screenshot"] = {"error": shot}
    refused = await client.fetch_html(page, reject_resource_types=["script"])
    result["refused"] = refused
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
