// Checks that a PNG screenshot shows something: decodes it (8-bit RGB or
// RGBA, not interlaced, as browsers write them) with Node's zlib and counts
// the distinct colours and the pixels that differ from the most common one
// (the background).
//
// Usage: node png_not_blank.js FILE
// Prints "WIDTHxHEIGHT, N colours, P% not background"; exits 1 when the
// image is blank (fewer than 4 colours or under 0.5% drawn) or unreadable.
'use strict';

const fs = require('fs');
const zlib = require('zlib');

function decode(file) {
  const png = fs.readFileSync(file);
  if (png.subarray(0, 8).toString('hex') !== '89504e470d0a1a0a') throw new Error('not a PNG');
  let width = 0, height = 0, colorType = 0;
  const idat = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error('only 8-bit, non-interlaced PNGs');
      colorType = data[9];
    } else if (type === 'IDAT') {
      idat.push(data);
    }
    at += 12 + length;
  }
  const channels = {2: 3, 6: 4}[colorType];
  if (!channels) throw new Error(`colour type ${colorType} not supported`);
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      let value = line[x];
      if (filter === 1) value += a;
      else if (filter === 2) value += b;
      else if (filter === 3) value += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        value += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      pixels[y * stride + x] = value & 0xff;
    }
  }
  return {width, height, channels, pixels};
}

const file = process.argv[2];
try {
  const {width, height, channels, pixels} = decode(file);
  const counts = new Map();
  for (let i = 0; i < pixels.length; i += channels) {
    const rgb = pixels.readUIntBE(i, 3);
    counts.set(rgb, (counts.get(rgb) || 0) + 1);
  }
  let background = 0;
  for (const count of counts.values()) background = Math.max(background, count);
  const drawn = width * height - background;
  const colours = counts;
  const percent = (100 * drawn) / (width * height);
  console.log(`${file}: ${width}x${height}, ${colours.size} colours, ${percent.toFixed(1)}% not background`);
  process.exit(colours.size >= 4 && percent >= 0.5 ? 0 : 1);
} catch (error) {
  console.log(`${file}: ${error.message}`);
  process.exit(1);
}
