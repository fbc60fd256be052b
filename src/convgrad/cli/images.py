"""Reading images for the demo and the ``msssim`` command: bundled photographs and files.

scikit-image (bundled photographs) and Pillow (files) are imported inside the functions
that need them, never when ``convgrad`` is imported.  Pixel values come back as floats
in [0, 1]: 8-bit images divided by 255, 16-bit ones by 65535.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["BUNDLED_TRAINING", "HELD_OUT", "bundled_images", "held_out_image", "load_folder",
           "read_image", "to_gray"]

# photographs (and a few textures and micrographs) shipped inside scikit-image
BUNDLED_TRAINING = ("astronaut", "coffee", "chelsea", "rocket", "coins", "moon", "clock",
                    "brick", "grass", "gravel", "immunohistochemistry", "hubble_deep_field")
HELD_OUT = "camera"

# ITU-R BT.709 luma, as skimage.color.rgb2gray
_LUMA = np.array([0.2125, 0.7154, 0.0721])


def _unit_range(a: np.ndarray) -> np.ndarray:
    """Integers scaled by their type's maximum, bools to {0, 1}; floats as they are."""
    if a.dtype == bool:
        return a.astype(np.float64)
    if a.dtype.kind in "ui":
        return a.astype(np.float64) / np.iinfo(a.dtype).max
    return a.astype(np.float64)


def to_gray(a: np.ndarray) -> np.ndarray:
    """(H, W), (H, W, 3) or (H, W, 4) image -> (H, W) float32 in [0, 1] (alpha dropped)."""
    a = _unit_range(np.asarray(a))
    if a.ndim == 3 and a.shape[-1] in (3, 4):
        a = a[..., :3] @ _LUMA
    elif a.ndim != 2:
        raise ValueError(f"to_gray: image of shape {a.shape} must be (H, W) or (H, W, 3|4)")
    return np.clip(a, 0.0, 1.0).astype(np.float32)


def bundled_images() -> list[tuple[str, np.ndarray]]:
    """The training photographs of :data:`BUNDLED_TRAINING`, gray, as (name, image) pairs."""
    from skimage import data

    return [(name, to_gray(getattr(data, name)())) for name in BUNDLED_TRAINING]


def held_out_image() -> np.ndarray:
    """scikit-image's ``camera`` (512 x 512), gray in [0, 1]: never seen in training."""
    from skimage import data

    return to_gray(getattr(data, HELD_OUT)())


def _open(path: str) -> Any:
    from PIL import Image, UnidentifiedImageError

    try:
        img = Image.open(path)
        img.load()
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path!r}") from None
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise ValueError(f"cannot read {path!r} as an image: {e}") from None
    return img


def read_image(path: str | os.PathLike) -> np.ndarray:
    """An image file -> (C, H, W) float64 in [0, 1]: C = 1 for gray, 3 for colour.

    8-bit images are divided by 255, 16-bit gray ones by 65535; an alpha channel is
    dropped (RGBA -> RGB, LA -> L); palette and other colour modes become RGB; a
    multi-frame file gives its first frame.
    """
    path = os.fspath(path)
    img = _open(path)
    mode = img.mode
    if mode in ("1", "LA", "La"):
        img, mode = img.convert("L"), "L"
    elif mode.startswith("I;16") or mode == "I":
        arr = np.asarray(img, dtype=np.float64) / 65535.0
        if arr.min() < 0 or arr.max() > 1:
            raise ValueError(f"{path!r}: {mode} pixel values outside 0..65535")
        return arr[None]
    elif mode not in ("L", "RGB"):
        if mode == "F":
            raise ValueError(f"{path!r}: floating-point images (mode F) are not supported; "
                             "expected 8-bit or 16-bit gray, or colour")
        img, mode = img.convert("RGB"), "RGB"
    arr = np.asarray(img, dtype=np.float64) / 255.0
    return arr[None] if mode == "L" else np.ascontiguousarray(arr.transpose(2, 0, 1))


def load_folder(folder: str | os.PathLike, min_side: int) -> list[tuple[str, np.ndarray]]:
    """Every image file in ``folder`` (not recursive) that Pillow reads, gray in [0, 1].

    Images whose smaller side is below ``min_side`` are skipped.  A missing folder, or one
    with no usable image, is a ValueError saying why.
    """
    from PIL import Image

    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ValueError(f"--images: {folder!r} is not a folder")
    extensions = {ext.lower() for ext in Image.registered_extensions()}
    found, small, unreadable = [], [], []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not os.path.isfile(path) or os.path.splitext(name)[1].lower() not in extensions:
            continue
        try:
            arr = read_image(path)
        except ValueError:
            unreadable.append(name)
            continue
        gray = arr[0] if arr.shape[0] == 1 else np.tensordot(_LUMA, arr, axes=1)
        if min(gray.shape) < min_side:
            small.append(f"{name} ({gray.shape[0]}x{gray.shape[1]})")
            continue
        found.append((name, np.clip(gray, 0, 1).astype(np.float32)))
    if not found:
        why = []
        if small:
            why.append(f"too small (need both sides >= {min_side}): {', '.join(small)}")
        if unreadable:
            why.append(f"unreadable: {', '.join(unreadable)}")
        raise ValueError(f"--images: no usable image in {folder!r}"
                         + (f"; {'; '.join(why)}" if why else " (no image files found)"))
    return found
