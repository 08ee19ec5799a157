"""What each inspection view accepts at most: torch-free, so the page (sliders, hints) is built
before PyTorch loads. The logic modules import their limits from here and enforce them."""

# Fill-Mask (explore.fill_mask)
MAX_TOP_K = 50
MAX_MASKS = 20
MAX_TARGETS = 20  # target words per request
MAX_TARGET_CHARS = 50  # characters per target word

# Inside BERT (explore.inside, explore.inside_output)
MAX_INSIDE_TOKENS = 64  # the step-by-step views expand every token; beyond this they stop being readable
MAX_LENS_TOP_K = 10

# Masking lab (explore.masking_lab)
MAX_EPOCHS = 200
MAX_STATIC_COPIES = 50
MAX_DRAWS = 20_000

# Next-sentence pairs (explore.nsp)
MIN_SEQ_LEN, MAX_SEQ_LEN = 16, 128
MAX_PAIRS = 16

# Every endpoint (ui.request_limits checks these before any handler runs)
MAX_TEXT_CHARS = 200_000  # a text to look at: far beyond the 512 tokens a model reads
MAX_PROBE_CHARS = 300  # the live run's probe sentence: kept at every evaluation and sent to every page
