"""``make soak``: an hour of steady load under periodic faults, sampled every 10 s."""
