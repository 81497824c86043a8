{
  "targets": [
    {
      "target_name": "anvia_sandbox",
      "sources": ["<!@(find -L src -name '*.c' -not -path 'src/agent/*' | sort)"],
      "include_dirs": ["src"],
      "libraries": ["-lcurl", "-lssl", "-lcrypto", "-larchive", "-ljansson"],
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      "cflags": ["-std=c11", "-fvisibility=hidden"],
      "cflags_c": ["-std=c11"],
      "configurations": {
        "Debug": {
          "defines": ["ANVIA_TEST_EXPORTS"],
          "cflags": ["-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-g", "-O0"],
          "cflags_c": ["-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
        },
        "Release": {
          "cflags": ["-Wall", "-Wextra", "-O2"]
        }
      },
      "conditions": [
        ["OS=='linux' and '<!(echo $ANVIA_SANITIZE)'=='1'", {
          "cflags": ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"],
          "ldflags": ["-fsanitize=address,undefined"]
        }]
      ]
    }
  ]
}
