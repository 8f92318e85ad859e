"""A pure-Python wheel built by hand (zipfile): what the package tests install, with no
network and no build tool."""
import base64
import hashlib
import io
import zipfile


def make_wheel(name, version, body):
    """A pure-Python wheel (name-version-py3-none-any.whl) with module name.py = body."""
    info = "%s-%s.dist-info" % (name, version)
    files = {
        name + ".py": body.encode(),
        info + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                             % (name, version)).encode(),
        info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: sandboxd-tests\n"
                         b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return "%s-%s-py3-none-any.whl" % (name, version), out.getvalue()
