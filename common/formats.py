"""The image files Quire imports, embeds and serves: raster formats only.

An .svg or .html file listed in a metadata file would run script on Quire's origin if it were
served, and Pillow hands some formats (EPS) to outside decoders; so files are accepted by name at
import, and by the format Pillow decodes in them when read.
"""

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".gif")
# Pillow's format name -> the content type a browser is sent.
RASTER_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}
