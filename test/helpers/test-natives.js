// The natives only the debug and asan builds have (napi/exports_*.c under ANVIA_TEST_EXPORTS),
// pinned: test/helpers/native.js takes them from the debug build under a release one,
// exports.test.js and the consumer test check that the release and prebuilt binaries have
// none of them. No import, so that a test may read the list without loading the addon.
export const TEST_NATIVES = [
  "demuxFrames", "tarBuild", "tarPeek", "tarReadFile", "userspecResolve", "buildStreamRender", "buildHumanSize",
  "posixNormalize", "posixJoin", "posixDirname", "posixRelative", "posixIsAbsolute", "containerPath",
  "parentSandboxPath", "textPage", "utf8Valid", "utf8BomLength", "parseListing", "jsNumberSize",
];
