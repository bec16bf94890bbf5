// The translation unit that builds the tests' precompiled header
// (cmake/gpulens.cmake: gpulens_test_pch); it has no code of its own.
