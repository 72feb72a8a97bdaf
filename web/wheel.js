// Install a pure-Python wheel into Pyodide's file system from JavaScript.
//
// A wheel is a zip; for a pure wheel, installing is writing its files under site-packages.
// Doing the unzip here (DecompressionStream) instead of in Python (pyodide.unpackArchive →
// zipfile) keeps Python's first seconds for importing tang. The caller verifies by importing.

const u16 = (v, at) => v.getUint16(at, true);
const u32 = (v, at) => v.getUint32(at, true);

function entries(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let eocd = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 65535); at--) {
    if (u32(view, at) === 0x06054b50) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) throw new Error("not a zip file (no end of central directory)");
  const count = u16(view, eocd + 10);
  let at = u32(view, eocd + 16);
  const out = [];
  const decoder = new TextDecoder();
  for (let i = 0; i < count; i++) {
    if (u32(view, at) !== 0x02014b50) throw new Error("corrupt zip central directory");
    const method = u16(view, at + 10);
    const size = u32(view, at + 20);
    const nameLen = u16(view, at + 28);
    const skip = nameLen + u16(view, at + 30) + u16(view, at + 32);
    const local = u32(view, at + 42);
    const name = decoder.decode(bytes.subarray(at + 46, at + 46 + nameLen));
    if (u32(view, local) !== 0x04034b50) throw new Error(`corrupt zip entry ${name}`);
    const start = local + 30 + u16(view, local + 26) + u16(view, local + 28);
    out.push({ name, method, data: bytes.subarray(start, start + size) });
    at += 46 + skip;
  }
  return out;
}

async function inflate({ name, method, data }) {
  if (method === 0) return data;
  if (method !== 8) throw new Error(`${name}: unsupported zip compression ${method}`);
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Write the wheel's files under `sitePackages`; returns the number of files written. */
export async function installWheel(pyodide, bytes, sitePackages) {
  const files = entries(new Uint8Array(bytes)).filter((e) => !e.name.endsWith("/"));
  for (const e of files) {
    if (e.name.startsWith("/") || e.name.split("/").includes("..")) {
      throw new Error(`unsafe path in wheel: ${e.name}`);
    }
  }
  const contents = await Promise.all(files.map(inflate));
  const FS = pyodide.FS;
  files.forEach((e, i) => {
    const path = `${sitePackages}/${e.name}`;
    FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    FS.writeFile(path, contents[i]);
  });
  return files.length;
}
