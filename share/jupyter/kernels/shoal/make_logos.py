# Shoal logo: a school of three fish on a deep-teal rounded square (stdlib only).
import struct, zlib, math, sys

def png(path, n):
    bg0, bg1 = (12, 74, 110), (20, 140, 160)
    fish = (250, 250, 245)
    r = n * 0.2
    ss = 4
    rows = []
    fishes = [(0.34, 0.34, 0.17), (0.66, 0.50, 0.17), (0.34, 0.68, 0.17)]
    for y in range(n):
        row = bytearray([0])
        for x in range(n):
            acc = [0, 0, 0, 0]
            for sy in range(ss):
                for sx in range(ss):
                    px, py = (x + (sx + 0.5) / ss), (y + (sy + 0.5) / ss)
                    # rounded square
                    dx = max(r - px, 0, px - (n - r)); dy = max(r - py, 0, py - (n - r))
                    if dx * dx + dy * dy > r * r:
                        continue
                    t = py / n
                    col = [bg0[i] * (1 - t) + bg1[i] * t for i in range(3)]
                    u, v = px / n, py / n
                    for cx, cy, s in fishes:
                        ex, ey = (u - cx) / s, (v - cy) / (s * 0.55)
                        body = ex * ex + ey * ey <= 1.0
                        tx = u - (cx - s)
                        tail = -0.45 * s <= tx <= 0 and abs(v - cy) <= -tx * 0.9 + 0.02
                        eye = (u - (cx + s * 0.5)) ** 2 + (v - (cy - s * 0.12)) ** 2 <= (s * 0.13) ** 2
                        if body or tail:
                            col = list(fish)
                        if eye:
                            col = list(bg0)
                    for i in range(3):
                        acc[i] += col[i]
                    acc[3] += 255
            k = ss * ss
            cov = acc[3] / 255
            if cov:
                row += bytes([int(acc[0] / cov), int(acc[1] / cov), int(acc[2] / cov), int(acc[3] / k)])
            else:
                row += bytes([0, 0, 0, 0])
        rows.append(bytes(row))
    raw = b"".join(rows)
    def chunk(t, d):
        c = struct.pack(">I", len(d)) + t + d
        return c + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", n, n, 8, 6, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    open(path, "wb").write(data)

d = sys.argv[1]
png(d + "/logo-32x32.png", 32)
png(d + "/logo-64x64.png", 64)
