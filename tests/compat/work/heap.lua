-- heap.lua - a Lua program for make compat: tables and strings (~150 MiB), changed,
-- collected and summed; the output depends only on the arithmetic.
local n = tonumber(arg[1]) or 400000
local t = {}
for i = 0, n - 1 do
  t[string.format("k%07d", (i * 7919) % n)] = { i, string.rep("v", i % 30) .. i, { i % 7, i % 11 } }
end
for i = 1, n - 1, 3 do t[string.format("k%07d", i)] = nil end
collectgarbage("collect")
local keys = {}
for k in pairs(t) do keys[#keys + 1] = k end
table.sort(keys)
local sum, h = 0, 0
for _, k in ipairs(keys) do
  local v = t[k]
  sum = sum + v[1] + #v[2] + v[3][1] + v[3][2]
  for j = 1, #k do h = (h * 31 + k:byte(j)) % 4294967296 end
end
local parts = {}
for i = 1, 200000 do parts[i] = tostring(i * i % 100003) end
local s = table.concat(parts, ",")
print("entries", #keys, "sum", sum, "hash", h, "len", #s)
