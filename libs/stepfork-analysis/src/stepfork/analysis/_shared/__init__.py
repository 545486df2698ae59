"""What several capabilities of stepfork.analysis use (private): ``atomic`` (the one atomic text write of
exported tests, receipts and views), ``render`` (the text and HTML rendering helpers of result objects),
``expectation`` (reading an ``--expect-output`` file) and ``labels`` (``--live-llm`` labels checked against a
recording). Nothing here imports a capability."""
